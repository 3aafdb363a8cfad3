@problemName AllMissing
@missing true
@data
1.0,2.0:3.0
1.0:?,nan
