@problemName toy
@timeStamps true
@univariate true
@classLabel true a b
@data
(0,1),(1,2),(2,3):a
