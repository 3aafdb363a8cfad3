@problemName Uni
@univariate true
@dimensions 3
@data
1.0:2.0:3.0
