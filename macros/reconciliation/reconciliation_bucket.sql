{% macro reconciliation_bucket(merchant_id) -%}
    {#-
        A key's reconciliation bucket, 0 to 4095: a SQL expression over the column or expression
        `merchant_id`, pmod(xxhash64(merchant_id), 4096) (Spark's xxhash64, seed 42: stable from
        build to build and across processes). int_payment_events_classified stores it
        (reconciliation_bucket), so that a slice's replay can skip the other buckets' row groups.
    -#}
    {{- "pmod(xxhash64(" ~ merchant_id ~ "), 4096)" -}}
{%- endmacro %}
