/** kafkajs-snappy ships no types: it exports kafkajs' codec factory (see node_modules/kafkajs-snappy/src/index.js). */
declare module 'kafkajs-snappy' {
  const SnappyCodec: () => {
    compress(encoder: { buffer: Buffer }): Promise<Buffer>;
    decompress(buffer: Buffer): Promise<Buffer>;
  };
  export default SnappyCodec;
}
