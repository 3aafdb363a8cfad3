# BOM and CRLF
@problemName Crlf

@data
1.0,2.0

1.0,2.0.0
