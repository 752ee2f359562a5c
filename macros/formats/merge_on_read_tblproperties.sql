{% macro merge_on_read_tblproperties() -%}
    {#-
        Table properties that make a MERGE record deleted rows without rewriting data files
        (merge-on-read): Delta deletion vectors, Iceberg v2 position deletes. For the config of
        incremental models whose MERGEs touch few rows of large files.
    -#}
    {%- if table_format() == 'delta' -%}
        {{ return({'delta.enableDeletionVectors': 'true'}) }}
    {%- endif -%}
    {{ return({
        'format-version': '2',
        'write.merge.mode': 'merge-on-read',
        'write.update.mode': 'merge-on-read',
        'write.delete.mode': 'merge-on-read',
    }) }}
{%- endmacro %}
