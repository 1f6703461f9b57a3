from django import template

from repos.diffrender import rows_html

register = template.Library()
register.simple_tag(rows_html, name="diff_rows")
