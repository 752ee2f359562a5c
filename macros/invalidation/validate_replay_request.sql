{% macro validate_replay_request() -%}
    {#-
        on-run-start hook: validates the manual replay vars (see replay_request) and checks that the
        segment or merchant is known to the snapshots, before any model runs. Renders nothing.
    -#}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set request = replay_request() -%}
    {%- if request is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set merchants = load_relation(node_relation('snp_payledger__merchants')) -%}
    {%- set policies = load_relation(node_relation('snp_payledger__reserve_policies')) -%}
    {%- if merchants is none or policies is none -%}
        {{ exceptions.raise_compiler_error("Manual replay needs the snapshots; run dbt build once first.") }}
    {%- endif -%}
    {%- if request.segment is not none -%}
        {%- set query = "select count(*) from (select segment from " ~ policies ~ " union all select segment from " ~ merchants ~ ") where segment = " ~ quoted_literal(request.segment) -%}
        {%- set what = "segment " ~ request.segment -%}
    {%- else -%}
        {%- set query = "select count(*) from " ~ merchants ~ " where merchant_id = " ~ quoted_literal(request.merchant_id) -%}
        {%- set what = "merchant " ~ request.merchant_id -%}
    {%- endif -%}
    {%- if run_query(query).rows[0][0] == 0 -%}
        {{ exceptions.raise_compiler_error("Unknown " ~ what ~ ": it is in no snapshot version of reserve_policies or merchants.") }}
    {%- endif -%}
    {{ log("Manual replay requested: " ~ request | tojson, info=true) }}
    {{ return('') }}
{%- endmacro %}
