{% macro reconciliation_slice_predicate(scope, merchant_id='merchant_id', bucket=none) -%}
    {#-
        A SQL predicate, true for the keys the reconciliation `scope` (reconciliation_scope) compares:
        `true` for a full reconciliation, else the key's slice is one of the checked slices.
        With `bucket`, a column holding the key's stored reconciliation_bucket, the predicate also
        names the checked slices' bucket ranges on that column (or null, for rows written before the
        column existed), so that a scan of a table laid out by bucket can skip the row groups and
        files of the other slices (Parquet's min/max statistics); the slice test on the key stays
        the exact one.
    -#}
    {%- if scope.full -%}
        {{- "true" -}}
    {%- else -%}
        {%- set slices = scope.slices | int -%}
        {%- set acc = namespace(ranges=[], low=none, high=none) -%}
        {%- for slice in scope.checked | map('int') | unique | sort -%}
            {#- Slice s is the buckets [ceil(s * 4096 / N), ceil((s + 1) * 4096 / N)); adjacent
                slices' ranges join. -#}
            {%- set low = (slice * 4096 + slices - 1) // slices -%}
            {%- set high = ((slice + 1) * 4096 + slices - 1) // slices -%}
            {%- if acc.high == low -%}
                {%- set acc.high = high -%}
            {%- else -%}
                {%- if acc.low is not none -%}
                    {%- do acc.ranges.append((acc.low, acc.high)) -%}
                {%- endif -%}
                {%- set acc.low = low -%}
                {%- set acc.high = high -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if acc.low is not none -%}
            {%- do acc.ranges.append((acc.low, acc.high)) -%}
        {%- endif -%}
        {%- set in_slices = reconciliation_slice_of(merchant_id, slices) ~ " in (" ~ scope.checked | map('int') | join(', ') ~ ")" -%}
        {%- if bucket is none -%}
            {{- in_slices -}}
        {%- else -%}
            {%- set bounds = [] -%}
            {%- for low, high in acc.ranges -%}
                {%- do bounds.append("(" ~ bucket ~ " >= " ~ low ~ " and " ~ bucket ~ " < " ~ high ~ ")") -%}
            {%- endfor -%}
            {{- "(" ~ (bounds + [bucket ~ " is null"]) | join(" or ") ~ ") and " ~ in_slices -}}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
