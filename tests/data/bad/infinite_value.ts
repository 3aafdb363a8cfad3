@problemName Inf
@data
1.0,2.0
1.0,inf
