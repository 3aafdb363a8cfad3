@problemName Dims
@univariate false
@dimensions 2
@classLabel true a b
@data
1.0,2.0:3.0,4.0:a
1.0,2.0:b
