{% macro reconciliation_slice_of(merchant_id, slices) -%}
    {#-
        The reconciliation slice of a key, 0 to `slices` - 1: a SQL expression over the column or
        expression `merchant_id`. The key's bucket, pmod(xxhash64(merchant_id), 4096) (Spark's
        xxhash64, seed 42: stable from build to build and across processes), scaled to `slices`:
        slice s holds the contiguous bucket range [ceil(s * 4096 / slices), ceil((s + 1) * 4096 /
        slices)), so a table laid out by bucket can skip the other slices' files.
    -#}
    {{- "(pmod(xxhash64(" ~ merchant_id ~ "), 4096) * " ~ (slices | int) ~ ") div 4096" -}}
{%- endmacro %}
