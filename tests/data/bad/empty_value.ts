@problemName Empty
@classLabel true a
@data
1.0,,2.0:a
