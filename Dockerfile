# A container image of guardctl built from this repository:
#   docker build -t guardctl .
#   docker run -p 8000:8000 -v guardctl-data:/data -e GUARD_API_KEY_ENABLED=true \
#     -e GUARD_ADMIN_API_KEYS=... -e GUARD_API_KEYS=... guardctl
# The build stage compiles the TypeScript and the native addons (better-sqlite3, re2);
# the image keeps only the production dependencies and dist/.
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN npm ci && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8000 DATABASE_URL=/data/guardctl.db
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/schema ./schema
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s CMD node -e "fetch('http://127.0.0.1:8000/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["serve"]
