{% macro reconciliation_slice_predicate(scope, merchant_id='merchant_id') -%}
    {#-
        A SQL predicate, true for the keys the reconciliation `scope` (reconciliation_scope) compares:
        `true` for a full reconciliation, else the key's slice is one of the checked slices.
    -#}
    {%- if scope.full -%}
        {{- "true" -}}
    {%- else -%}
        {{- reconciliation_slice_of(merchant_id, scope.slices) ~ " in (" ~ scope.checked | map('int') | join(', ') ~ ")" -}}
    {%- endif -%}
{%- endmacro %}
