//! The redaction rule set: each secret format is redacted, and a look-alike that is not a
//! secret is left alone.

use curator_model::{Content, Message, Part, ToolCall};
use curator_strategies::{CurationContext, HistoryManagerExt, Redactor};

/// (format, a line holding a secret of that format, the secret itself, a near miss).
const CASES: &[(&str, &str, &str, &str)] = &[
    (
        "libpq password with symbols",
        "PGPASSWORD='Tr0ub#4d!or%~x' psql -h db1 -U app",
        "Tr0ub#4d!or%~x",
        "PGPASSWORD is read by psql",
    ),
    (
        "url password with an empty user name",
        "REDIS_URL=redis://:pa55#word9Q@cache.internal:6379/0",
        "pa55#word9Q",
        "redis://cache.internal:6379/0",
    ),
    (
        "django secret key without its prefix",
        "SECRET_KEY = 'x9$k2!mq7@vz4#wp1^rt8&ny3*bh6(jd5)lc0-fs2_ge7+ua4qz'",
        "x9$k2!mq7@vz4#wp1^rt8&ny3*bh6(jd5)lc0-fs2_ge7+ua4qz",
        "SECRET_KEY = os.environ['SECRET_KEY']",
    ),
    (
        "github token wrapped by a shell continuation",
        "export GH_TOKEN=ghp_R8kQ2vX7mT4yL9wN3bP6cH1dF5sJ0gZ\\\naE2uK8 && gh auth status",
        "ghp_R8kQ2vX7mT4yL9wN3bP6cH1dF5sJ0gZ",
        "export GH_TOKEN=$(cat token.txt)",
    ),
    (
        "aws secret key split over two lines",
        "aws_secret_access_key = Zq8Rk3vT9yLm2Xw7Pb4N\nc6Hd1Fs5Gj0Ka8Ue3Yi2\nregion = us-east-1",
        "Zq8Rk3vT9yLm2Xw7Pb4N\nc6Hd1Fs5Gj0Ka8Ue3Yi2",
        "aws_secret_access_key = ${AWS_SECRET}\nregion = us-east-1",
    ),
    (
        "aws secret key split over two lines, at the end of the text",
        "AWS_SECRET_ACCESS_KEY = wJalrXUtnFEMI/K7MDENG/bPx\nRfiCYEXAMPLEKEY\n",
        "wJalrXUtnFEMI/K7MDENG/bPx\nRfiCYEXAMPLEKEY",
        "AWS_SECRET_ACCESS_KEY = ${AWS_SECRET}\n",
    ),
    (
        "password after an empty one (the next line is its own)",
        "PASSWORD=\nDB_PASSWORD=Tr0ub4dor&3x\nNEXT=value",
        "Tr0ub4dor&3x",
        "PASSWORD=\nNEXT=value\n",
    ),
    (
        "quoted passphrase in JSON",
        r#"{"password": "correct horse battery staple", "user": "ann"}"#,
        "correct horse battery staple",
        r#"{"password": "", "user": "ann"}"#,
    ),
    (
        "quoted passphrase in an env file",
        "PASSWORD='correct horse battery staple'\nUSER=ann",
        "correct horse battery staple",
        "PASSWORD_HINT=the usual one",
    ),
    (
        "client secret in JSON",
        r#"{"client_id": "web-app", "client_secret": "very-secret-value-123"}"#,
        "very-secret-value-123",
        r#"{"client_id": "web-app", "client_secret": "${CLIENT_SECRET}"}"#,
    ),
    (
        "secret in JSON",
        r#"{"secret": "Zx9!kLm2#pQr7$tUv"}"#,
        "Zx9!kLm2#pQr7$tUv",
        r#"{"secret": "the cake is a lie"}"#,
    ),
    (
        "access token in a URL",
        "GET /api/v1/me?access_token=abc123secretvalue&fields=id HTTP/1.1",
        "abc123secretvalue",
        "GET /api/v1/me?fields=id&access_token= HTTP/1.1",
    ),
    (
        "mysql password on the command line",
        "mysql -u root -pMyS3cretPw! -h db1 shop",
        "MyS3cretPw!",
        "mysql -u root -p -h db1 shop",
    ),
    (
        "session cookie",
        "Cookie: session=abc123def456ghi789; theme=dark",
        "abc123def456ghi789",
        "Cookie: theme=dark",
    ),
    (
        "aws access key id",
        "key id AKIAZ7VQ3X5KJ2MWB4TD in the config",
        "AKIAZ7VQ3X5KJ2MWB4TD",
        "the prefix AKIA alone, or AKIAshort",
    ),
    (
        "aws secret access key",
        "aws_secret_access_key = Zq8Rk3vT9yLm2Xw7Pb4Nc6Hd1Fs5Gj0Ka8Ue3Yi2",
        "Zq8Rk3vT9yLm2Xw7Pb4Nc6Hd1Fs5Gj0Ka8Ue3Yi2",
        "aws_secret_access_key = ${AWS_SECRET}",
    ),
    (
        "stripe live secret key",
        "STRIPE=sk_live_51H8kZQ2eZvKYlo2C9xYz7ABCdefGHIjkl",
        "sk_live_51H8kZQ2eZvKYlo2C9xYz7ABCdefGHIjkl",
        "use sk_live_ keys in production",
    ),
    (
        "google api key",
        "maps key AIzaSyD9hR2kX7mQ4vB1nP8sL3tW6yZ0cF5gJ2e here",
        "AIzaSyD9hR2kX7mQ4vB1nP8sL3tW6yZ0cF5gJ2e",
        "the AIza prefix marks Google keys",
    ),
    (
        "hugging face token",
        "HF_TOKEN=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",
        "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",
        "hf_hub_download(repo_id)",
    ),
    (
        "gitlab personal access token",
        "token glpat-x7Kp2Qr9Ls4Mn8Vb3Zc1",
        "glpat-x7Kp2Qr9Ls4Mn8Vb3Zc1",
        "a glpat- token goes here",
    ),
    (
        "npm access token",
        "//registry/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "run npm_install first",
    ),
    (
        "basic auth in a url",
        "git clone https://deploy:S3cr3tP4ssw0rd@git.example.org/repo.git",
        "S3cr3tP4ssw0rd",
        "https://git.example.org/user@host/repo.git",
    ),
    (
        "password assignment",
        "export DB_PASSWORD=Tr0ub4dor-and-3",
        "Tr0ub4dor-and-3",
        "password = request.form.get(name)",
    ),
    (
        "openai project key",
        "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "sk-proj- keys are per project",
    ),
    (
        "anthropic api key",
        "key sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98765432",
        "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98765432",
        "sk-ant-api03- is the prefix",
    ),
    (
        "github personal access token",
        "GITHUB_TOKEN=ghp_R4nd0mT0k3nV4lu3ThatIsThirtySix12345",
        "ghp_R4nd0mT0k3nV4lu3ThatIsThirtySix12345",
        "the ghp_ prefix means a classic token",
    ),
    (
        "github fine-grained token",
        "github_pat_11ABCDEFG0abcdefghijkl_MNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789ABCDE",
        "github_pat_11ABCDEFG0abcdefghijkl_MNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789ABCDE",
        "github_pat_ tokens expire",
    ),
    (
        "slack bot token",
        "SLACK=xoxb-2048576-1234567890-Ab3De6Gh9Jk2Mn5Pq8St",
        "xoxb-2048576-1234567890-Ab3De6Gh9Jk2Mn5Pq8St",
        "xoxb tokens belong to bots",
    ),
    (
        "slack webhook",
        "POST https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/aBcDeFgHiJkLmNoPqRsTuVwX",
        "hooks.slack.com/services/T01ABCDEF/B02GHIJKL/aBcDeFgHiJkLmNoPqRsTuVwX",
        "see https://api.slack.com/messaging/webhooks",
    ),
    (
        "json web token",
        "auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJ is base64 for {\"",
    ),
    (
        "private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq2Qx9W3Hk8\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA7bq2Qx9W3Hk8",
        "-----BEGIN PUBLIC KEY-----",
    ),
    (
        "bearer token",
        "Authorization: Bearer 8f3k2Jq9Zx7Lm4Np1Vb6Tc5Yh0Rw",
        "8f3k2Jq9Zx7Lm4Np1Vb6Tc5Yh0Rw",
        "the bearer of this letter",
    ),
    (
        "sendgrid api key",
        "SENDGRID_API_KEY=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",
        "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",
        "SG.setVisible(true)",
    ),
    (
        "twilio api key",
        "TWILIO_KEY=SK2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d",
        "SK2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d",
        "SKU number 12345",
    ),
    (
        "shopify access token",
        "shopify token 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",
        "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",
        "shpat_ prefix",
    ),
    (
        "digitalocean token",
        "DO_TOKEN=dop_v1_4f6e3b2a1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f",
        "dop_v1_4f6e3b2a1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f",
        "dop_v1_ tokens",
    ),
    (
        "postman api key",
        "PMAK-6123f8e2a9b3c40012345678-0a1b2c3d4e5f60718293a4b5c6d7e8f901",
        "PMAK-6123f8e2a9b3c40012345678-0a1b2c3d4e5f60718293a4b5c6d7e8f901",
        "PMAK stands for Postman API key",
    ),
    (
        "linear api key",
        "LINEAR_API_KEY=lin_api_a8Bc3De6Fg9Hi2Jk5Lm8No1Pq4Rs7Tu0Vw3Xy6Za9",
        "lin_api_a8Bc3De6Fg9Hi2Jk5Lm8No1Pq4Rs7Tu0Vw3Xy6Za9",
        "lin_api_ is Linear's prefix",
    ),
    (
        "databricks token",
        "token dapi0123456789abcdef0123456789abcdef",
        "dapi0123456789abcdef0123456789abcdef",
        "the dapi endpoint",
    ),
    (
        "pypi upload token",
        "password = pypi-AgEIcHlwaS5vcmcCJGE4ZDFlZjc5LTZlMDAtNDI0Ny1hNDMzLTg1ZjkxODM4YjkzMwACKlsz",
        "pypi-AgEIcHlwaS5vcmcCJGE4ZDFlZjc5LTZlMDAtNDI0Ny1hNDMzLTg1ZjkxODM4YjkzMwACKlsz",
        "pip install pypi-simple",
    ),
    (
        "docker hub token",
        "DOCKERHUB_TOKEN=dckr_pat_2b3e36beeb386dfdaacb9b46004",
        "dckr_pat_2b3e36beeb386dfdaacb9b46004",
        "dckr_pat_ tokens",
    ),
    (
        "doppler token",
        "DOPPLER_TOKEN=dp.pt.bJVMW4sNbTbGyHQsTjtKk2s8GZnRfgsNnxNzcFVkQxY",
        "dp.pt.bJVMW4sNbTbGyHQsTjtKk2s8GZnRfgsNnxNzcFVkQxY",
        "dp.pt is a prefix",
    ),
    (
        "grafana service account token",
        "glsa_pITqM9ZzJ5cKJ3t8s7bZ9Jx2Q6kYhL4w_1a2b3c4d",
        "glsa_pITqM9ZzJ5cKJ3t8s7bZ9Jx2Q6kYhL4w_1a2b3c4d",
        "glsa_ tokens",
    ),
    (
        "new relic user key",
        "NEW_RELIC_API_KEY=NRAK-7K2JQ4X9ZP3L8M5N1R6T0W2Y4V8",
        "NRAK-7K2JQ4X9ZP3L8M5N1R6T0W2Y4V8",
        "NRAK keys",
    ),
    (
        "age secret key",
        "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
        "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
        "AGE-SECRET-KEY- is a prefix",
    ),
    (
        "vault token",
        "VAULT_TOKEN=hvs.CAESIJlU9JMYEhOPYv4kn4ceCkT5oQ9oJTwQMN3CYoTYz1QDGh4KHGh2cy5zVnJnd2VSbkNYdnA1U3FSN2FoN1kyUmY",
        "hvs.CAESIJlU9JMYEhOPYv4kn4ceCkT5oQ9oJTwQMN3CYoTYz1QDGh4KHGh2cy5zVnJnd2VSbkNYdnA1U3FSN2FoN1kyUmY",
        "hvs. tokens",
    ),
    (
        "alibaba access key",
        "ALIBABA_ACCESS_KEY_ID=LTAI5tK8sDjq7XzP2mN9vRbW",
        "LTAI5tK8sDjq7XzP2mN9vRbW",
        "LTAI keys",
    ),
    (
        "mailgun api key",
        "MAILGUN_API_KEY=key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
        "key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
        "key-value store",
    ),
    (
        "telegram bot token",
        "TELEGRAM_BOT_TOKEN=5832146879:AAHk2Jd9Fq3Lx7Mz1Nv4Pb8Rc6Sy0Tw5Uex",
        "5832146879:AAHk2Jd9Fq3Lx7Mz1Nv4Pb8Rc6Sy0Tw5Uex",
        "5832146879 is a phone number",
    ),
    (
        "square access token",
        "SQUARE_TOKEN=EAAAEOuLQObrVwJvCvoio3H13b8Ssqz1ighmTBKZvIENW9qxirHGHkqsGcPBC1uN",
        "EAAAEOuLQObrVwJvCvoio3H13b8Ssqz1ighmTBKZvIENW9qxirHGHkqsGcPBC1uN",
        "EAAA is four letters",
    ),
    (
        "pulumi access token",
        "PULUMI_ACCESS_TOKEN=pul-9d6f3a8c2b1e7f0a4d5c6b8e9f1a2b3c4d5e6f70",
        "pul-9d6f3a8c2b1e7f0a4d5c6b8e9f1a2b3c4d5e6f70",
        "pul-l the lever",
    ),
    (
        "sentry auth token",
        "SENTRY_AUTH_TOKEN=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",
        "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",
        "sntrys_ prefix",
    ),
    (
        "azure storage account key",
        "DefaultEndpointsProtocol=https;AccountName=store;AccountKey=Xn3kS9vQ2mL7pR4tW8yB1cF6hJ0gD5aE3zU9iO2lK7nM4qP8sT1vX6wY0bC5dF9hJ2kL7mN3pQ6rS==;EndpointSuffix=core.windows.net",
        "Xn3kS9vQ2mL7pR4tW8yB1cF6hJ0gD5aE3zU9iO2lK7nM4qP8sT1vX6wY0bC5dF9hJ2kL7mN3pQ6rS==",
        "AccountName=store;EndpointSuffix=core.windows.net",
    ),
    (
        "mapbox secret token",
        "MAPBOX=sk.eyJ1IjoiZGV2ZWxvcGVyIiwiYSI6ImNrNnN4eTJ5YTAwMXEzbXBlZGRxdHV4b3gifQ.Fz8sbHSkQn3Zq9bQ7m2X1w",
        "sk.eyJ1IjoiZGV2ZWxvcGVyIiwiYSI6ImNrNnN4eTJ5YTAwMXEzbXBlZGRxdHV4b3gifQ.Fz8sbHSkQn3Zq9bQ7m2X1w",
        "sk.eyJ is a prefix",
    ),
    (
        "generic api key",
        "api_key = \"f9e8d7c6b5a4F3E2D1C0b9a8\"",
        "f9e8d7c6b5a4F3E2D1C0b9a8",
        "api_key = get_api_key()",
    ),
    (
        "azure sas signature",
        "az storage blob download --blob-url \"https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T23:59:59Z&spr=https&sig=Jx8k2%2BqLm9Rt4vW7yZ1aB3cD5eF6gH8iJ0kL2mN4oP6%3D\"",
        "Jx8k2%2BqLm9Rt4vW7yZ1aB3cD5eF6gH8iJ0kL2mN4oP6%3D",
        "the sig= parameter of a SAS URL signs it",
    ),
    (
        "discord bot token",
        "client.run(\"MTEwMjM0NTY3ODkwMTIzNDU2Nw.ecj9iN.Orjj5VfqRTk8j1d-bWWbjkloG1QX647kdNl9cD\")",
        "MTEwMjM0NTY3ODkwMTIzNDU2Nw.ecj9iN.Orjj5VfqRTk8j1d-bWWbjkloG1QX647kdNl9cD",
        "client = discord.Client(intents=discord.Intents.default())",
    ),
    (
        "docker hub token piped to docker login",
        "echo \"dckr_pat_Xq3M9vR2kT7pL4wN8bZ1cY6hJ0s\" | docker login -u ci-bot --password-stdin",
        "dckr_pat_Xq3M9vR2kT7pL4wN8bZ1cY6hJ0s",
        "create a dckr_pat_ token under Account settings",
    ),
    (
        "django insecure secret key in an env file",
        "SECRET_KEY='django-insecure-29326@ml64^%lg2tjf8-^c#z2&+%&k%a7edcmp#b3u2@m7o^s5'",
        "django-insecure-29326@ml64^%lg2tjf8-^c#z2&+%&k%a7edcmp#b3u2@m7o^s5",
        "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']",
    ),
    (
        "google oauth access token",
        "$ gcloud auth print-access-token\nya29.a0AfB_byak6J0kGODKdinZnLXicaBAg8WY1jzIRlNQb0prFmbh7_wy5yq1XoY1BaIMcAxYmfsB4HbQLXjjlAFbVV6q9rXxtNDFyuzX9k1gnneGEYG1_LwiqD9jJBAciI05FhfwKVqlUr5Qrec8TN",
        "ya29.a0AfB_byak6J0kGODKdinZnLXicaBAg8WY1jzIRlNQb0prFmbh7_wy5yq1XoY1BaIMcAxYmfsB4HbQLXjjlAFbVV6q9rXxtNDFyuzX9k1gnneGEYG1_LwiqD9jJBAciI05FhfwKVqlUr5Qrec8TN",
        "tokens that start with ya29. expire after an hour",
    ),
    (
        "atlassian api token",
        "JIRA_API_TOKEN=ATATT3xFfGF0PtYgjmUhBel31iEl2hpChYgCfrL1spNxnyVmihA-2O76UMFxFkM-R5Kjp1vRt_1fjORS-6ilI8ihN5KXSc7Tvo-hBKqFYY-kv5ZJr3J1TWDtkwtDDb_xHKas1VOqg6YYZYn9ZhyiA4uoRgnatmUdjAWtGSU8po_799NksnRH9uc=6B40928B",
        "ATATT3xFfGF0PtYgjmUhBel31iEl2hpChYgCfrL1spNxnyVmihA-2O76UMFxFkM-R5Kjp1vRt_1fjORS-6ilI8ihN5KXSc7Tvo-hBKqFYY-kv5ZJr3J1TWDtkwtDDb_xHKas1VOqg6YYZYn9ZhyiA4uoRgnatmUdjAWtGSU8po_799NksnRH9uc=6B40928B",
        "Atlassian API tokens start with ATATT3",
    ),
    (
        "github token wrapped across two lines",
        "export GITHUB_TOKEN=ghp_R4nd0mT0k3nV4lu3\n    ThatIsThirtySix12345",
        "ghp_R4nd0mT0k3nV4lu3\n    ThatIsThirtySix12345",
        "export GITHUB_TOKEN=\n    $(gh auth token)",
    ),
    (
        "aws secret with an escaped slash in json",
        r#"{"aws_secret_access_key": "Zq8Rk3vT9yLm2Xw7\/b4Nc6Hd1Fs5Gj0Ka8Ue3Yi2"}"#,
        r"Zq8Rk3vT9yLm2Xw7\/b4Nc6Hd1Fs5Gj0Ka8Ue3Yi2",
        r#"{"aws_secret_access_key": "${AWS_SECRET_ACCESS_KEY}", "path": "a\/b"}"#,
    ),
    (
        "password with an escaped quote in json",
        r#"{"db": {"user": "app", "password": "Xk9#mQ2\"vL7pR4tW"}}"#,
        r#"Xk9#mQ2\"vL7pR4tW"#,
        r#"{"db": {"user": "app", "password": "${DB_PASSWORD}", "note": "say \"hi\""}}"#,
    ),
    (
        "stripe key with a unicode escape in json",
        r#"{"STRIPE_KEY": "sk_l\u0069ve_51H8kZQ2eZvKYlo2C9xYz7ABCdefGHIjkl"}"#,
        r"sk_l\u0069ve_51H8kZQ2eZvKYlo2C9xYz7ABCdefGHIjkl",
        r#"{"note": "sk_l\u0069ve_ keys are for production"}"#,
    ),
    (
        "gcp service account private key id",
        r#"{"type": "service_account", "project_id": "acme-prod", "private_key_id": "e0ca923732881584d8c4fa2815d2802827283e0a", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}"#,
        "e0ca923732881584d8c4fa2815d2802827283e0a",
        r#"{"type": "service_account", "project_id": "acme-prod", "private_key_id": ""}"#,
    ),
];

fn redact(text: &str) -> String {
    Redactor::new().redact(text).into_owned()
}

/// A piece of `secret` still in `out`: the secret whole, or (so that a secret redacted only
/// in part, say up to an escape or a line break, is caught) any 12 characters of one of its
/// lines.
fn leftover(out: &str, secret: &str) -> Option<String> {
    if out.contains(secret) {
        return Some(secret.to_owned());
    }
    for piece in secret.split_whitespace() {
        let chars: Vec<char> = piece.chars().collect();
        for window in chars.windows(12) {
            let window: String = window.iter().collect();
            if out.contains(&window) {
                return Some(window);
            }
        }
    }
    None
}

#[test]
fn every_format_is_redacted_and_its_near_miss_is_not() {
    assert!(CASES.len() >= 40, "{} formats", CASES.len());
    let mut failures = Vec::new();
    for (format, line, secret, near_miss) in CASES {
        let out = redact(line);
        // What comes before the secret's word is sent as it is (a private key's block, or
        // a webhook's URL, is a secret whole).
        let before = line.find(secret).map_or("", |at| &line[..at]);
        let before = &before[..before.rfind(char::is_whitespace).map_or(0, |i| i + 1)];
        let before = if *format == "private key" { "" } else { before };
        if let Some(left) = leftover(&out, secret) {
            failures.push(format!("{format}: {left:?} left in: {out}"));
        } else if !out.contains("[REDACTED:") {
            failures.push(format!("{format}: not redacted: {out}"));
        } else if !out.starts_with(before) {
            failures.push(format!("{format}: the text before the secret changed: {out}"));
        } else if serde_json::from_str::<serde_json::Value>(line).is_ok()
            && serde_json::from_str::<serde_json::Value>(&out).is_err()
        {
            failures.push(format!("{format}: no longer JSON: {out}"));
        }
        let kept = redact(near_miss);
        if kept != *near_miss {
            failures.push(format!("{format}: near miss changed: {kept}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

/// Each format is also redacted as a tool call's argument, and inside JSON text that holds
/// the line as a string (escaped, with `/` written `\/`), which stays JSON.
#[test]
fn every_format_is_redacted_in_tool_call_arguments_and_escaped_json() {
    let redactor = Redactor::new();
    let mut failures = Vec::new();
    for (format, line, secret, _) in CASES {
        let arguments = serde_json::json!({ "input": line }).to_string();
        let call = Message::assistant_with_calls(None, vec![ToolCall::new("c1", "run", arguments)]);
        // Answered: a call left unanswered at the end is never sent.
        let result = Message::tool_result("c1", "done");
        let view = redactor.curate_messages(&[call, result], &CurationContext::default()).unwrap();
        let args: serde_json::Value =
            serde_json::from_str(view[0].tool_calls()[0].arguments()).unwrap();
        let input = args["input"].as_str().unwrap_or_default();
        if let Some(left) = leftover(input, secret) {
            failures.push(format!("{format}: tool call: {left:?} left in {input}"));
        }
        // The line as a string inside JSON text: a tool result that returns it.
        let literal = serde_json::to_string(line).unwrap().replace('/', "\\/");
        let text = format!("{{\"output\": {literal}, \"status\": 0}}");
        let redacted = redactor.redact(&text);
        match serde_json::from_str::<serde_json::Value>(&redacted) {
            Ok(value) => {
                let output = value["output"].as_str().unwrap_or_default();
                // A secret the line writes escaped is looked for as the line writes it.
                let plain: String = serde_json::from_str(&format!("\"{secret}\""))
                    .unwrap_or_else(|_| (*secret).to_owned());
                if let Some(left) = leftover(output, secret).or_else(|| leftover(output, &plain)) {
                    failures.push(format!("{format}: escaped JSON: {left:?} left in {output}"));
                }
            }
            Err(_) => failures.push(format!("{format}: escaped JSON: no longer JSON: {redacted}")),
        }
    }
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_text_bearing_part_arguments_and_documents_are_redacted_in_place() {
    let secret = "AKIAZ7VQ3X5KJ2MWB4TD";
    let document = serde_json::json!({
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": format!("creds: {secret}")},
        "cache_control": {"type": "ephemeral"}
    });
    let user = Message::user(Content::Parts(vec![
        Part::text(format!("first {secret}")),
        Part::image(curator_model::ImageSource::from_url("https://x/a.png")),
        Part::Raw { format: curator_model::Format::Anthropic, value: document },
    ]));
    let call =
        ToolCall::new("c1", "deploy", serde_json::json!({"env": {"key": secret}}).to_string());
    let assistant = Message::assistant_with_calls(None, vec![call]);
    let result = Message::tool_result("c1", "deployed");
    let view = Redactor::new()
        .curate_messages(&[user.clone(), assistant, result], &CurationContext::default())
        .unwrap();
    let Some(Content::Parts(parts)) = view[0].content() else { panic!("parts") };
    assert_eq!(parts.len(), 3, "parts stay where they were");
    assert!(parts[0].as_text().is_some_and(|t| !t.contains(secret)));
    assert!(matches!(parts[1], Part::Image { .. }));
    let Part::Raw { value, .. } = &parts[2] else { panic!("document") };
    assert!(!value.to_string().contains(secret), "{value}");
    assert_eq!(value["cache_control"]["type"], "ephemeral");
    let args: serde_json::Value =
        serde_json::from_str(view[1].tool_calls()[0].arguments()).unwrap();
    assert!(!args.to_string().contains(secret), "arguments stay JSON and lose the key: {args}");
}

#[test]
fn part_fields_such_as_cache_breakpoints_survive() {
    let mut fields = serde_json::Map::new();
    fields.insert("cache_control".into(), serde_json::json!({"type": "ephemeral"}));
    let part = Part::Text {
        text: "token ghp_R4nd0mT0k3nV4lu3ThatIsThirtySix12345".into(),
        extra: curator_model::ProviderFields::non_empty(curator_model::Format::Anthropic, fields),
    };
    let message = Message::user(Content::Parts(vec![part]));
    let view = Redactor::new().curate_messages(&[message], &CurationContext::default()).unwrap();
    let Some(Content::Parts(parts)) = view[0].content() else { panic!("parts") };
    let Part::Text { text, extra } = &parts[0] else { panic!("text") };
    assert!(text.contains("[REDACTED:"), "{text}");
    assert!(extra.is_some(), "the cache breakpoint was dropped");
}

/// Redacts every message of the corpus, prints what each kind found (for review of false
/// positives), and checks that redaction is stable (a second pass changes nothing) and keeps
/// tool-call arguments valid JSON.
#[test]
fn the_corpus_redactions_are_counted_and_stable() {
    use std::collections::BTreeMap;

    let Some(corpus) = curator_testkit::corpus::load() else { return };
    let redactor = Redactor::new();
    let mut kinds: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    let mut total = 0;
    for conversation in &corpus {
        let messages = curator_model::formats::openai::to_messages(&conversation.messages).unwrap();
        let view = redactor.curate_messages(&messages, &CurationContext::default()).unwrap();
        for (before, after) in messages.iter().zip(&view) {
            let text = after.text();
            assert_eq!(redactor.redact(&text), text, "a second pass changed {}", conversation.id);
            for (call, redacted) in before.tool_calls().iter().zip(after.tool_calls()) {
                if serde_json::from_str::<serde_json::Value>(call.arguments()).is_ok() {
                    serde_json::from_str::<serde_json::Value>(redacted.arguments()).unwrap();
                }
            }
            let original = before.text();
            for piece in text.split("[REDACTED:").skip(1) {
                let kind = piece.split(']').next().unwrap_or_default().to_owned();
                total += 1;
                let entry = kinds.entry(kind).or_default();
                entry.0 += 1;
                if entry.1.len() < 3 {
                    // What was there: the original line around the first difference.
                    let at = original.char_indices().zip(text.chars()).find(|((_, a), b)| a != b);
                    let start = at.map_or(0, |((i, _), _)| i);
                    let line: String = original[start..].chars().take(60).collect();
                    entry.1.push(line.replace('\n', " "));
                }
            }
        }
    }
    eprintln!("{total} redactions over {} conversations", corpus.len());
    for (kind, (n, samples)) in &kinds {
        eprintln!("{n:5} {kind}: {samples:?}");
    }
}

/// Redacting tool-call arguments keeps everything that is not a secret byte for byte
/// (numbers' text, key order, spacing), and sees keys beside their values: a password in
/// JSON arguments is redacted as it is in text (the fresh-eyes review found `1e2` written
/// back as `100.0`, keys reordered, and `"password": "..."` sent as it was).
#[test]
fn arguments_keep_their_text_and_their_passwords_are_redacted() {
    let arguments = r#"{"z": 1, "a": 1e2, "b": 2.50, "big": 123456789012345678901234567890, "token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "password": "Xk9#mQ2vL7pR4tW"}"#;
    let input = vec![
        Message::user("deploy"),
        Message::assistant_with_calls(None, vec![ToolCall::new("c1", "deploy", arguments)]),
        Message::tool_result("c1", "done"),
    ];
    let view = Redactor::new().curate_messages(&input, &CurationContext::default()).unwrap();
    let sent = view[1].tool_calls()[0].arguments();
    assert!(
        sent.starts_with(
            r#"{"z": 1, "a": 1e2, "b": 2.50, "big": 123456789012345678901234567890, "token": ""#
        ),
        "{sent}"
    );
    assert!(!sent.contains("xoxb-123456789012") && !sent.contains("Xk9#mQ2vL7pR4tW"), "{sent}");
    serde_json::from_str::<serde_json::Value>(sent).unwrap();
}

/// Redaction replaces a secret's own characters and nothing else: the lines of an
/// environment file or of headers after a secret stay as they were.
#[test]
fn the_lines_after_a_secret_are_sent_unchanged() {
    let r = Redactor::new();
    let env = "DB_PASSWORD=s3cretpass99\nDB_HOST=db1.internal\nDB_PORT=5432\nDB_USER=app2user\nLOG_LEVEL=debug";
    assert_eq!(
        r.redact(env),
        "DB_PASSWORD=[REDACTED:password_assignment]\nDB_HOST=db1.internal\nDB_PORT=5432\nDB_USER=app2user\nLOG_LEVEL=debug"
    );
    let env =
        "HOME=/root\nOPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z\nPATH=/usr/bin\nnext";
    let out = r.redact(env);
    assert!(out.starts_with("HOME=/root\nOPENAI_API_KEY=[REDACTED:"), "{out}");
    assert!(out.ends_with("]\nPATH=/usr/bin\nnext"), "{out}");
    let headers = "Authorization: Bearer abcdef0123456789abcdefXYZ\nContent-Type: application/json";
    assert_eq!(
        r.redact(headers),
        "Authorization: Bearer [REDACTED:bearer_token]\nContent-Type: application/json"
    );
    // A token wrapped over two lines is still found, and its line break stays.
    let wrapped = "export T=ghp_R4nd0mT0k3nV4lu3\n    ThatIsThirtySix12345\nend";
    assert_eq!(r.redact(wrapped), "export T=[REDACTED:github_token]\n\nend");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// Over generated environment files, header blocks and logs: every line break of the
    /// input is in the output, and every line that holds no secret comes out as it went in
    /// (a line that opens with a token after a line ending in a token may be the rest of a
    /// wrapped secret, and its token goes with it).
    #[test]
    fn redaction_keeps_every_line_break_and_every_line_without_a_secret(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                "[A-Z][A-Z_]{2,12}=[a-z0-9./:-]{1,24}",
                "[A-Z][A-Za-z-]{2,14}: [a-z0-9/;= .-]{1,30}",
                "[a-z ]{0,30}[0-9]{0,4}",
                "(PASSWORD|API_KEY|SECRET|TOKEN)=[A-Za-z0-9]{12,40}",
                "Authorization: Bearer [A-Za-z0-9]{20,40}",
                "[A-Za-z0-9_=+/.-]{8,40}",
            ],
            1..12,
        ),
    ) {
        let text = lines.join("\n");
        let out = Redactor::new().redact(&text).into_owned();
        proptest::prop_assert_eq!(out.matches('\n').count(), text.matches('\n').count(), "{:?} -> {:?}", text, out);
        let token = |c: char| c.is_ascii_alphanumeric() || "_-+/=.%".contains(c);
        for (before, after) in text.lines().zip(out.lines()) {
            // The line's first token, as the redactor reads a wrap's rest.
            let body = before.trim_start();
            let first: String = body.chars().take_while(|&c| token(c)).collect();
            let random = first.chars().any(|c| c.is_ascii_digit()) && first.chars().any(|c| c.is_ascii_alphabetic());
            let ends = body[first.len()..]
                .chars()
                .next()
                .is_none_or(|c| "\"'`,;)]}\\".contains(c) || (c.is_whitespace() && random));
            let may_continue = ends && !first.trim_end_matches('=').contains('=');
            if !after.contains("[REDACTED:") && !may_continue {
                proptest::prop_assert_eq!(before, after);
            }
        }
    }
}

#[test]
fn a_token_wrapped_by_a_shell_continuation_keeps_the_continuation() {
    let text = "export GH_TOKEN=ghp_R8kQ2vX7mT4yL9wN3bP6cH1dF5sJ0gZ\\\naE2uK8 && gh auth status";
    assert_eq!(redact(text), "export GH_TOKEN=[REDACTED:github_token]\\\n && gh auth status");
    let url = "REDIS_URL=redis://:pa55#word9Q@cache.internal:6379/0";
    assert_eq!(redact(url), "REDIS_URL=redis://:[REDACTED:url_password]@cache.internal:6379/0");
}
