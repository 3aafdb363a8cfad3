@problemName Dims
@univariate false
@data
1.0:2.0:3.0
4.0:5.0:6.0
7.0:8.0
