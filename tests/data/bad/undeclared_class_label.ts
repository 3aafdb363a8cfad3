@problemName Undeclared
@classLabel true a b
@data
1.0,2.0:a
1.0,2.0:c
