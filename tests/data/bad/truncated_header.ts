@problemName Trunc
@timeStamps false
@classLabel true 1 2
@univ