{% macro table_format() -%}
    {#-
        'delta' or 'iceberg': the format of every table dbt writes, from the var `table_format`
        (dbt_project.yml decides it from the target). Raises a compiler error for any other value.
    -#}
    {%- set format = var('table_format') | string | trim | lower -%}
    {%- if format not in ['delta', 'iceberg'] -%}
        {{ exceptions.raise_compiler_error("var table_format must be delta or iceberg, got " ~ format | tojson) }}
    {%- endif -%}
    {{- return(format) -}}
{%- endmacro %}
