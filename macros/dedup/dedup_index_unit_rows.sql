{% macro dedup_index_unit_rows() -%}
    {#-
        The event ids per unit (one file) of the dedup index's ranged part (var
        `dedup_index_unit_rows`, default 5000): a batch's lookup reads the units its ids fall in, so
        smaller units read fewer bytes per re-sent id and write more files. Raises a compiler error
        unless it is a whole number from 1 to 10,000,000.
    -#}
    {%- set rows = var('dedup_index_unit_rows', 5000) -%}
    {%- if rows is string and rows | trim | int(-1) >= 1 and (rows | trim | int) | string == rows | trim -%}
        {#- From an environment variable (dbt_project.yml): a whole number as text. -#}
        {%- set rows = rows | trim | int -%}
    {%- endif -%}
    {%- if rows is not number or rows is boolean or rows != (rows | int) or rows < 1 or rows > 10000000 -%}
        {{ exceptions.raise_compiler_error("var dedup_index_unit_rows must be a whole number from 1 to 10000000, got " ~ (rows | string | tojson)) }}
    {%- endif -%}
    {{ return(rows | int) }}
{%- endmacro %}
