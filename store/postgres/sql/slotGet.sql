SELECT {{template "slotColumns"}} FROM {{schema}}.slots WHERE job = $1 AND slot = $2
