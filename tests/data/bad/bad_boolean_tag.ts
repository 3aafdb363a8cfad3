@problemName Bool
@timeStamps yes
@data
1.0
