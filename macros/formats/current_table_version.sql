{% macro current_table_version(relation) -%}
    {#-
        The version a reader of `relation` sees now, as an integer, for `VERSION AS OF`; none when
        the table has no version yet.
    -#}
    {{- return(format_variant('current_table_version')(relation)) -}}
{%- endmacro %}


{% macro delta__current_table_version(relation) -%}
    {#- Delta's table version: the latest of `describe history`. -#}
    {%- set found = run_query("describe history " ~ relation ~ " limit 1") -%}
    {{- return(found.columns['version'].values()[0] | int if found.rows | length > 0 else none) -}}
{%- endmacro %}


{% macro iceberg__current_table_version(relation) -%}
    {#- Iceberg's current snapshot id: the `main` branch of the `refs` metadata table. -#}
    {%- set found = run_query("select snapshot_id from " ~ relation ~ ".refs where name = 'main'") -%}
    {{- return(found.columns['snapshot_id'].values()[0] | int if found.rows | length > 0 else none) -}}
{%- endmacro %}
