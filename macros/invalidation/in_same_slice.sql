{% macro in_same_slice(slices, rows) -%}
    {#-
        Join condition: a row of `rows` (keys or events found per slice, with the slice's columns and
        its merchant as `slice_merchant_id`, as invalidated_merchants returns them) belongs to the
        slice of `slices` (balance_invalidation_slices). Slice columns may be null, hence `<=>`.
    -#}
    {{ slices }}.cause = {{ rows }}.cause
    and {{ slices }}.segment <=> {{ rows }}.segment
    and {{ slices }}.merchant_id <=> {{ rows }}.slice_merchant_id
    and {{ slices }}.from_date <=> {{ rows }}.from_date
    and {{ slices }}.observed_at <=> {{ rows }}.observed_at
{%- endmacro %}
