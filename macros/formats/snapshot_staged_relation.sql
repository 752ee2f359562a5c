{% macro snapshot_staged_relation(source) -%}
    {#-
        How a snapshot's MERGE names dbt-spark's staging relation `source` (the relation
        spark__snapshot_merge_sql reads the changes from).
    -#}
    {{- return(format_variant('snapshot_staged_relation')(source)) -}}
{%- endmacro %}


{% macro delta__snapshot_staged_relation(source) -%}
    {#- A schema-qualified view. -#}
    {{- return(source) -}}
{%- endmacro %}


{% macro iceberg__snapshot_staged_relation(source) -%}
    {#- An unqualified temporary view: dbt-spark stages Iceberg snapshots in the session. -#}
    {{- return(source.identifier) -}}
{%- endmacro %}
