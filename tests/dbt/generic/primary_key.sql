{% test primary_key(model, column_name=none, columns=none) %}
{#-
    A primary key in one scan (instead of `unique` and `not_null`, a scan each): returns each value
    of the key, one column (`column_name`, as a column test) or several (`columns`, as a model
    test), that occurs more than once or has a null part, with its row count.
-#}
{%- set key = columns or [column_name] -%}
select
    {{ key | join(', ') }},
    count(*) as row_count
from {{ model }}
group by {{ key | join(', ') }}
having count(*) > 1 or {{ key | join(' is null or ') }} is null
{% endtest %}
