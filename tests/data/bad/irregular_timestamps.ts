@problemName Irregular
@timeStamps true
@classLabel true a
@data
(0,1.0),(1,2.0),(2,3.0):a
(0,1.0),(1,2.0),(3,3.0):a
