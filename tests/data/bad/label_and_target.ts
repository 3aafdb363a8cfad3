@problemName Both
@classLabel true a
@targetLabel true
@data
1.0:a
