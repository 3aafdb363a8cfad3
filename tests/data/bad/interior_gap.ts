@problemName Gap
@missing true
@classLabel true a
@data
1.0,2.0,?:3.0:a
1.0,2.0:3.0,NaN,4.0:a
