@problemName BadTime
@timeStamps true
@data
(2019-13-01 00:00:00,1.0),(2019-13-01 01:00:00,2.0)
