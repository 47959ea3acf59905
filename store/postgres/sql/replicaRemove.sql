DELETE FROM {{schema}}.replicas WHERE owner = $1
