{% macro quoted_literal(value) -%}
    {#- A Spark SQL string literal for `value`: backslashes and single quotes escaped. -#}
    {{- "'" ~ (value | string).replace("\\", "\\\\").replace("'", "\\'") ~ "'" -}}
{%- endmacro %}
