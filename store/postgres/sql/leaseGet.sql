SELECT {{template "leaseColumns"}} FROM {{schema}}.leases WHERE name = $1
