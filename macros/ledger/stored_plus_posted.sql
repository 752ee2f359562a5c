{% macro stored_plus_posted(stored, stored_kind, posted, posted_kind) -%}
    {#-
        The select expressions of a balance carried forward: each of the three balances of the
        stored row `stored` (null when none is stored yet: 0) plus the same balance of `posted`, as
        money_type(), named as `stored_kind`'s columns. Kinds (balance_columns): `balance` (the
        view), `change` (a checkpoint day), `delta` (summed postings).
    -#}
    {%- set stored_columns = balance_columns(stored_kind) -%}
    {%- set posted_columns = balance_columns(posted_kind) -%}
    {%- for index in range(stored_columns | length) %}
        cast(coalesce({{ stored }}.{{ stored_columns[index] }}, 0) + {{ posted }}.{{ posted_columns[index] }} as {{ money_type() }})
            as {{ stored_columns[index] }}{{ ',' if not loop.last }}
    {%- endfor %}
{%- endmacro %}


{% macro balance_columns(kind) -%}
    {#- The available, pending and reserve columns of a kind: `balance`, `change` or `delta`. -#}
    {%- set kinds = {
        'balance': ['available_balance', 'pending_balance', 'reserve_hold'],
        'change': ['available_change', 'pending_change', 'reserve_change'],
        'delta': ['available_delta', 'pending_delta', 'reserve_delta'],
    } -%}
    {%- if kind not in kinds -%}
        {{ exceptions.raise_compiler_error("balance_columns: unknown kind " ~ kind ~ "; expected one of " ~ kinds.keys() | join(', ')) }}
    {%- endif -%}
    {{- return(kinds[kind]) -}}
{%- endmacro %}
