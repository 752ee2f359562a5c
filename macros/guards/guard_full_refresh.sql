{% macro guard_full_refresh() -%}
    {#-
        Refuses `--full-refresh` of the calling model unless `--vars '{"allow_full_refresh": true}'`
        is given: the balance view is repaired by replay, not rebuilt by accident. Logs the decision.
    -#}
    {%- if execute and flags.FULL_REFRESH -%}
        {%- set allowed = var('allow_full_refresh', false) -%}
        {%- if allowed is not sameas true and allowed is not sameas false -%}
            {{ exceptions.raise_compiler_error(
                "var allow_full_refresh must be true or false (a YAML boolean), got " ~ allowed | string | tojson
            ) }}
        {%- endif -%}
        {%- if not allowed -%}
            {{ exceptions.raise_compiler_error(
                "Refusing --full-refresh of " ~ this ~ ": the view is repaired by replay "
                ~ "(dbt build --selector balance_replay ...). To rebuild it from canonical history anyway, "
                ~ "add --vars '{\"allow_full_refresh\": true}'."
            ) }}
        {%- endif -%}
        {{ log("allow_full_refresh=true: rebuilding " ~ this ~ " from canonical history", info=true) }}
    {%- endif -%}
{%- endmacro %}
