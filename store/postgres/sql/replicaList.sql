SELECT {{template "replicaColumns"}} FROM {{schema}}.replicas ORDER BY owner COLLATE "C"
