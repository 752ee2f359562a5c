{#- True when the select statement `query` returns at least one row. -#}
{% macro _has_rows(query) -%}
    {%- set probe = run_query('select 1 as found from (' ~ query ~ ') as candidate limit 1') -%}
    {{- return(probe.rows | length > 0) -}}
{%- endmacro %}
