@problemName Case
@classLabel true walking running
@data
1.0,2.0:walking
1.0,2.0:Running
