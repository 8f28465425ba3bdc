# isolad and the isola CLI (isola ctl, isola load). Build from the
# repository root:
#   docker build -f deploy/isolad.Dockerfile -t ghcr.io/isola-project/isolad:latest .
FROM rust:1-bookworm AS build
RUN apt-get update -qq && apt-get install -y -qq clang cmake && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p isola-daemon -p isola-cli \
 && install -D target/release/isolad /out/isolad \
 && install -D target/release/isola /out/isola

FROM debian:bookworm-slim
RUN apt-get update -qq && apt-get install -y -qq ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/isolad /out/isola /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/isolad"]
CMD ["--config", "/etc/isola/isolad.toml"]
