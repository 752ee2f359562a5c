{% macro relation_is_format(relation, format) -%}
    {#-
        Whether `relation` (a relation from dbt-spark's cache, which records each table's provider)
        is a table of `format`; false for a format the project does not write (parquet, a view).
    -#}
    {{- return(format in table_formats() and format_variant('relation_is_format', format)(relation)) -}}
{%- endmacro %}


{% macro delta__relation_is_format(relation) -%}
    {{- return(relation.is_delta) -}}
{%- endmacro %}


{% macro iceberg__relation_is_format(relation) -%}
    {{- return(relation.is_iceberg) -}}
{%- endmacro %}


{% macro relation_is_any_format(relation) -%}
    {#- Whether `relation` is a table of any format the project writes (relation_is_format). -#}
    {%- for format in table_formats() if relation_is_format(relation, format) -%}
        {{- return(true) -}}
    {%- endfor -%}
    {{- return(false) -}}
{%- endmacro %}
