@problemName toy
@univariate true
@classLabel true x y
@data
1,2,3:x
