@problemName Target
@targetLabel true
@data
1.0,2.0:0.5
1.0,2.0:high
