@problemName Nothing
@classLabel true a
@data

