"""The floor's three tables: projects, their tokens, and chained entries."""

from __future__ import annotations

import uuid

from django.db import models


class Project(models.Model):
    id = models.CharField(primary_key=True, max_length=64)


class Token(models.Model):
    digest = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=64)
    project = models.ForeignKey(Project, on_delete=models.CASCADE)


class Entry(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True)
    project = models.ForeignKey(Project, on_delete=models.PROTECT)
    seq = models.PositiveBigIntegerField()
    category = models.CharField(max_length=64)
    content = models.TextField()
    content_sha256 = models.CharField(max_length=64)
    source = models.CharField(max_length=128)
    author = models.CharField(max_length=64)
    created_at = models.CharField(max_length=40)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "seq"], name="floor_seq")]
