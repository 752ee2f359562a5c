{% macro round_to_minor_unit(amount, minor_unit) -%}
    {#-
        `amount` rounded half up (Spark's `round`) to `minor_unit` decimals, a column or expression
        of 0 to 4 (ISO 4217's minor units: currency_minor_unit). Spark's `round` takes a literal
        scale, hence one branch per minor unit.
    -#}
    case {{ minor_unit }}{% for digits in range(5) %} when {{ digits }} then round({{ amount }}, {{ digits }}){% endfor %} end
{%- endmacro %}
