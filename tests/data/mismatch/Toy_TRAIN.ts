@problemName toy
@univariate true
@classLabel true a b
@data
1,2,3:a
4,5,6:b
