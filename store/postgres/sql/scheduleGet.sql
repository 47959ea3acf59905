SELECT {{template "scheduleColumns" args "row" "s"}} FROM {{schema}}.schedules s WHERE s.name = $1
