"""The API toolkit both apps build on (views.py, serializers.py)."""
