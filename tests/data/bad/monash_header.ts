# a Monash file under a .ts name
@relation test
@attribute series_name string
@data
T1:1,2,3
