from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0010_contextdelivery_recalled'),
    ]

    operations = [
        migrations.AddField(
            model_name='contextdelivery',
            name='session',
            field=models.CharField(blank=True, max_length=128, null=True),
        ),
    ]
