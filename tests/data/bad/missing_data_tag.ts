@problemName NoData
@classLabel true 1 2
1.0,2.0:1
