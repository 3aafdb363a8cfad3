# Café data
@problemName Utf
@data
1.0
