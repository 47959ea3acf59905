DROP TABLE IF EXISTS {{schema}}.alerts;
DROP TABLE IF EXISTS {{schema}}.replicas;
