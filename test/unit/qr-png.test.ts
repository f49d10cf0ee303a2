/**
 * The B1 QR PNG (src/web/qr-png.ts): a valid PNG that a QR reader decodes back to the content, black on white,
 * 4 pixels per module with a 4-module quiet zone; content too long for a QR code throws.
 */
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import QRCode from 'qrcode';
import { QR_PIXELS_PER_MODULE, QR_QUIET_ZONE_MODULES, renderQrPng } from '../../src/web/qr-png';

const uri = 'tron:TJRabPrwbZy45sbavfcjinPJC18kjpRTv8?amount=12.345678&token=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';

describe('renderQrPng', () => {
  it.each([uri, 'x', 'tron:T?amount=0.01&memo=café ☕'])('renders %s as a PNG that decodes back to it', async (content) => {
    const bytes = await renderQrPng(content);
    expect(bytes.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    const image = PNG.sync.read(bytes);
    const modules = QRCode.create([{ data: Buffer.from(content, 'utf8'), mode: 'byte' }], { errorCorrectionLevel: 'M' }).modules;
    const width = (modules.size + 2 * QR_QUIET_ZONE_MODULES) * QR_PIXELS_PER_MODULE;
    expect([image.width, image.height]).toEqual([width, width]);
    const decoded = jsQR(new Uint8ClampedArray(image.data), image.width, image.height);
    expect(decoded?.data).toBe(content);
    // Every pixel is the colour of its module (quiet zone white), black = 0, white = 255, opaque.
    const wrong: string[] = [];
    for (let y = 0; y < width; y += 1) {
      for (let x = 0; x < width; x += 1) {
        const row = Math.floor(y / QR_PIXELS_PER_MODULE) - QR_QUIET_ZONE_MODULES;
        const column = Math.floor(x / QR_PIXELS_PER_MODULE) - QR_QUIET_ZONE_MODULES;
        const inside = row >= 0 && column >= 0 && row < modules.size && column < modules.size;
        const dark = inside && modules.get(row, column);
        const offset = (y * width + x) * 4;
        if (image.data[offset] !== (dark ? 0 : 255) || image.data[offset + 3] !== 255) wrong.push(`${x},${y}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('throws for content no QR code can hold', async () => {
    await expect(renderQrPng('x'.repeat(8000))).rejects.toThrow();
  });
});
