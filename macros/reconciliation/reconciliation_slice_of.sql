{% macro reconciliation_slice_of(merchant_id, slices) -%}
    {#-
        The reconciliation slice of a key, 0 to `slices` - 1: a SQL expression over the column or
        expression `merchant_id`. The key's bucket (reconciliation_bucket, 0 to 4095) scaled to
        `slices`: slice s holds the contiguous bucket range [ceil(s * 4096 / slices),
        ceil((s + 1) * 4096 / slices)) (reconciliation_slice_predicate's `bucket` ranges).
    -#}
    {{- "(" ~ reconciliation_bucket(merchant_id) ~ " * " ~ (slices | int) ~ ") div 4096" -}}
{%- endmacro %}
