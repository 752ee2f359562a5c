{% macro _balance_key_literal(name, value) -%}
    {#-
        Private. `value` of the key column `name` (merchant_id or currency) as a quoted SQL literal,
        after checking its shape: a merchant id is 1-64 letters, digits and _ . : -, a currency 3
        uppercase letters. Raises a compiler error saying what was expected otherwise.
    -#}
    {%- set expected = {'merchant_id': 'letters, digits and _ . : - (at most 64)', 'currency': 'an ISO 4217 code, 3 uppercase letters'} -%}
    {%- if not (value is string and modules.re.fullmatch(identifier_pattern(name), value)) -%}
        {{ exceptions.raise_compiler_error(name ~ " must be " ~ expected[name] ~ ", got " ~ (value | string | tojson)) }}
    {%- endif -%}
    {{- return(quoted_literal(value)) -}}
{%- endmacro %}
