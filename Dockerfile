# cronfence as an image: the static binary, its config and nothing else.
# Build the binary first (no cgo, the zone database built in), then the
# image; `make image` does both:
#
#   make build && podman build -t cronfence .
#
# The image has no shell and no tools: its jobs run programs that are in it.
# For jobs that need a shell or tools, build an image FROM a base that has
# them and COPY bin/cronfence into it, or add the programs FROM this one.
# See docs/deploy.md.
FROM scratch
COPY bin/cronfence /cronfence
COPY deploy/container/cronfence.yaml /etc/cronfence/cronfence.yaml
# The SQLite file, when no CRONFENCE_DATABASE_URL is given: one host only.
COPY --chown=65534:65534 deploy/container/data/ /data/
USER 65534:65534
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["/cronfence"]
CMD ["serve", "--config", "/etc/cronfence/cronfence.yaml", "--listen", ":8080"]
