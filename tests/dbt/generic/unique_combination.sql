{% test unique_combination(model, columns) %}
{#- Primary-key test over several columns: returns each combination that appears more than once. -#}
select
    {{ columns | join(', ') }},
    count(*) as row_count
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
{% endtest %}
